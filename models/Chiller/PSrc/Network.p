// The network between nodes, as the engine's transport runs under Chiller: reliable (the spec's
// D1: a message is lost only when a crashed node's channels are closed, and ChillerOptions
// refuses a link that drops), but unordered and doubling (the engine's LinkFaults Reorder and
// Duplicate, which Chiller's runs use). P queues a message in its receiver's inbox as it is sent,
// so machines that sent directly would see every pair's messages in order, once each. Here each
// message rides a courier machine of its own, which the checker schedules like any other: two
// messages, even between the same pair, arrive in either order, and a courier may deliver its
// message twice. Only protocol messages between coordinators, primaries and replicas travel so.
// The cluster manager's notices come through the membership interface, not the transport, and a
// copy handing over to the Primary it starts stays within its node: both are sent directly.
machine Courier {
  start state Carrying {
    entry (m: (dest: machine, ev: event, payload: any, twice: bool)) {
      send m.dest, m.ev, m.payload;
      if (m.twice) { send m.dest, m.ev, m.payload; }
    }
  }
}

fun Post(dest: machine, ev: event, payload: any) {
  new Courier((dest = dest, ev = ev, payload = payload, twice = $));
}
