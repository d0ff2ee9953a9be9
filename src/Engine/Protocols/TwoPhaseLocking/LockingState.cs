using Contend.Engine.Runtime;

namespace Contend.Engine.Protocols.TwoPhaseLocking;

/// <summary>
/// 2PL's per-worker state beside the context's access list, entry for entry: the lock mode each
/// access holds and where its before-image is. Made by the protocol on a context's first
/// transaction and kept on it (<see cref="TxnContext.ProtocolState"/>); only that context's
/// worker touches it.
/// </summary>
internal class LockingState
{
    /// <summary>An <see cref="Image"/> entry: the attempt has not written the row.</summary>
    public const int NotWritten = -1;
    /// <summary>An <see cref="Image"/> entry: written, with no image kept (an attempt that cannot abort).</summary>
    public const int WrittenWithoutImage = -2;

    /// <summary>The lock mode held (<see cref="LockingProtocol"/>'s None, Shared, Exclusive, or a subclass's own).</summary>
    public readonly byte[] Mode = new byte[TxnContext.MaxOps];
    /// <summary>Offset of the before-image in <see cref="TxnContext.Buffer"/>, <see cref="NotWritten"/>,
    /// or <see cref="WrittenWithoutImage"/>.</summary>
    public readonly int[] Image = new int[TxnContext.MaxOps];
}
