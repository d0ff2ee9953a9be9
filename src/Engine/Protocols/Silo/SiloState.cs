using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.Silo;

/// <summary>
/// Silo's per-worker state beside the context's access list, entry for entry: whether the row is
/// in the write set (and, from commit's phase 1, locked by this attempt), and where its private
/// copy is. Made by the protocol on a context's first transaction and kept on it
/// (<see cref="TxnContext.ProtocolState"/>); only that context's worker touches it.
/// </summary>
internal sealed class SiloState(int accessCapacity)
{
    public const byte ReadOnly = 0, InWriteSet = 1, LockedByMe = 2;

    public readonly byte[] Mode = new byte[accessCapacity];
    /// <summary>Offset of the row's private copy in <see cref="TxnContext.Buffer"/>.</summary>
    public readonly int[] Copy = new int[accessCapacity];
    /// <summary>The attempt wrote the row without reading it (<see cref="SiloOcc.GrantBlind"/>): it
    /// has no version to validate, and the version it overwrites is the one it locks.</summary>
    public readonly bool[] Blind = new bool[accessCapacity];
}
