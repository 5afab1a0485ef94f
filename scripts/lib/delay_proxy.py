#!/usr/bin/env python3
"""A TCP proxy on loopback that adds a fixed one-way delay to every byte, in both directions.

    python3 scripts/lib/delay_proxy.py --target 127.0.0.1:8443 --delay-ms 10 --stats FILE

It listens on a free port of 127.0.0.1, prints `ready PORT` on stdout once it accepts, and forwards
every connection to the target. Each chunk read from one side is written to the other side
`--delay-ms` after it was read (10 ms each way = a 20 ms round trip); chunks of one direction keep
their order, and a half-close is forwarded after the data before it. This kernel has no netem
(`tc qdisc ... netem`), so `scripts/bench` puts this in front of nginx for workload (f).

A new connection also pays one round trip before its first byte reaches the target, as a real TCP
handshake would (the kernel completes the client's handshake with the proxy at once, so without
this a connection would be free).

Timing: the event loop waits in `select()`, which takes microseconds; asyncio's default `epoll`
rounds every wait up to the next millisecond (up to +1 ms on each one-way delay). On a loaded
machine the delays are only as exact as the proxy's wake-ups: with ten compiler processes on two
cores a 10 ms timer fired 4-6 ms late on average (100 ms at worst), as a real-time process
(SCHED_FIFO, priority 10) 0.2 ms late (0.4 ms at worst). So the proxy asks for SCHED_FIFO (root or
CAP_SYS_NICE), else for nice -15, else runs as it is; `ready PORT POLICY` says which it got. It uses
little CPU and never spins, so the priority costs the measured tools nothing but the proxy's own
work. `--no-priority` keeps the normal policy.

With `--trace FILE` it appends one line per chunk: `TIME CONNECTION DIRECTION EVENT BYTES`, with
TIME in seconds on CLOCK_MONOTONIC (Python's `time.monotonic()`, comparable with the caller's),
DIRECTION `up` (client to server) or `down`, EVENT `in` (read by the proxy) or `out` (written to
the other side), BYTES 0 for a half-close. From outside a client, this shows how long it takes to
send its next request after a response reached it, without decrypting anything.

On SIGUSR1 it writes one JSON line to `--stats` (chunks and bytes delivered, mean and largest
lateness of a delivery against its due time, connections) and starts counting again, so a
benchmark can check, run by run, that the proxy kept its schedule.

Only the standard library; Python 3.8 or later.
"""

import argparse
import asyncio
import collections
import json
import os
import selectors
import signal

# Above this many bytes waiting in one direction (in the delay line and in the kernel-side write
# buffer of the destination), reading from the source pauses: the proxy never buffers a whole file.
HIGH_WATER = 8 << 20
LOW_WATER = 2 << 20


class Stats:
    def __init__(self):
        self.reset()

    def reset(self):
        self.chunks = 0
        self.bytes = 0
        self.late_sum = 0.0
        self.late_max = 0.0
        self.late_over_1ms = 0
        self.connections = 0

    def delivered(self, size, lateness):
        self.chunks += 1
        self.bytes += size
        self.late_sum += lateness
        self.late_max = max(self.late_max, lateness)
        if lateness > 0.001:
            self.late_over_1ms += 1

    def as_dict(self):
        return dict(chunks=self.chunks, bytes=self.bytes, connections=self.connections,
                    late_mean_ms=(self.late_sum / self.chunks * 1000) if self.chunks else 0.0,
                    late_max_ms=self.late_max * 1000, late_over_1ms=self.late_over_1ms)


class DelayLine:
    """One direction of one connection: chunks wait in order until their due time, then go out."""

    def __init__(self, loop, delay, stats, not_before=0.0, trace=None):
        self.loop = loop
        self.trace = trace  # (file, "CONNECTION DIRECTION") or None
        self.delay = delay
        self.stats = stats
        self.not_before = not_before  # no byte is due before this (the emulated handshake)
        self.items = collections.deque()  # (due, bytes, or None for EOF, or False for close)
        self.queued = 0
        self.timer = None
        self.source = None  # transport we read from (paused when too much waits)
        self.destination = None  # transport we write to (None until connected)
        self.paused = False

    def push(self, data):
        now = self.loop.time()
        due = max(now, self.not_before) + self.delay
        self.items.append((due, data))
        if self.trace:
            self.trace[0].write(f"{now:.6f} {self.trace[1]} in {len(data) if data else 0}\n")
        if data:
            self.queued += len(data)
            if not self.paused and self.source is not None and self.waiting() > HIGH_WATER:
                self.paused = True
                self.source.pause_reading()
        self.schedule()

    def waiting(self):
        buffered = self.destination.get_write_buffer_size() if self.destination is not None else 0
        return self.queued + buffered

    def schedule(self):
        if self.timer is None and self.items and self.destination is not None:
            self.timer = self.loop.call_at(self.items[0][0], self.flush)

    def attach(self, destination):
        self.destination = destination
        self.schedule()

    def flush(self):
        self.timer = None
        now = self.loop.time()
        destination = self.destination
        ready = []  # chunks due now leave in one write
        while self.items and self.items[0][0] <= now:
            due, data = self.items.popleft()
            self.stats.delivered(len(data) if data else 0, now - due)
            if self.trace:
                self.trace[0].write(f"{now:.6f} {self.trace[1]} out {len(data) if data else 0}\n")
            if data:
                self.queued -= len(data)
                ready.append(data)
                continue
            if ready:
                destination.write(b"".join(ready))
                ready = []
            if data is None:
                if destination.can_write_eof():
                    destination.write_eof()
            else:
                destination.close()
                self.items.clear()
                return
        if ready:
            destination.write(b"".join(ready))
        self.resume_if_drained()
        self.schedule()

    def resume_if_drained(self):
        if self.paused and self.waiting() < LOW_WATER and self.source is not None:
            self.paused = False
            self.source.resume_reading()


class Side(asyncio.Protocol):
    """One socket of a proxied pair; what it reads enters `outbound`, the line toward its peer."""

    def __init__(self, outbound, inbound):
        self.outbound = outbound
        self.inbound = inbound  # the line that writes to this side
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport
        self.outbound.source = transport
        self.inbound.attach(transport)

    def data_received(self, data):
        self.outbound.push(data)

    def eof_received(self):
        self.outbound.push(None)
        return True  # keep the other half open: the peer may still answer

    def connection_lost(self, exc):
        self.outbound.push(False)

    def pause_writing(self):
        # The kernel buffer toward this side is full: stop reading from the other side.
        source = self.inbound.source
        if source is not None and not self.inbound.paused:
            self.inbound.paused = True
            source.pause_reading()

    def resume_writing(self):
        self.inbound.resume_if_drained()


class Proxy:
    def __init__(self, loop, target_host, target_port, delay, stats, trace=None):
        self.loop = loop
        self.trace = trace
        self.accepted = 0  # connections since the start (trace numbering)
        self.target = (target_host, target_port)
        self.delay = delay
        self.stats = stats

    def accept(self):
        loop = self.loop
        self.stats.connections += 1
        handshake_done = loop.time() + 2 * self.delay
        self.accepted += 1
        number = self.accepted
        up_trace = (self.trace, f"{number} up") if self.trace else None
        down_trace = (self.trace, f"{number} down") if self.trace else None
        if self.trace:
            self.trace.write(f"{loop.time():.6f} {number} up accept 0\n")
        upstream = DelayLine(loop, self.delay, self.stats, not_before=handshake_done, trace=up_trace)
        downstream = DelayLine(loop, self.delay, self.stats, trace=down_trace)
        client = Side(upstream, downstream)
        loop.create_task(self.connect(upstream, downstream, client))
        return client

    async def connect(self, upstream, downstream, client):
        try:
            await self.loop.create_connection(lambda: Side(downstream, upstream), *self.target)
        except OSError:
            if client.transport is not None:
                client.transport.close()


def raise_priority():
    """Makes the proxy's wake-ups punctual on a busy machine; returns the policy it got."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return "fifo"
    except (OSError, AttributeError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -15)
        return "nice-15"
    except (OSError, AttributeError):
        return "normal"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--delay-ms", type=float, default=10.0, help="one-way delay (default 10 ms)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--stats", help="file written on SIGUSR1")
    parser.add_argument("--trace", help="file to append one line per chunk to")
    parser.add_argument("--no-priority", action="store_true", help="do not ask for SCHED_FIFO or a lower nice")
    args = parser.parse_args()
    policy = "normal" if args.no_priority else raise_priority()
    host, _, port = args.target.rpartition(":")

    loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
    asyncio.set_event_loop(loop)
    stats = Stats()
    trace = open(args.trace, "a", buffering=1 << 20) if args.trace else None
    proxy = Proxy(loop, host or "127.0.0.1", int(port), args.delay_ms / 1000.0, stats, trace)
    server = loop.run_until_complete(loop.create_server(proxy.accept, "127.0.0.1", args.port, backlog=1024))

    def dump():
        if trace:
            trace.flush()
        if args.stats:
            temporary = args.stats + ".tmp"
            with open(temporary, "w") as f:
                f.write(json.dumps(stats.as_dict()) + "\n")
            os.replace(temporary, args.stats)
        stats.reset()

    loop.add_signal_handler(signal.SIGUSR1, dump)
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    loop.add_signal_handler(signal.SIGINT, loop.stop)
    listening = server.sockets[0].getsockname()[1]
    print(f"ready {listening} {policy}", flush=True)
    try:
        loop.run_forever()
    finally:
        server.close()
        if trace:
            trace.close()


if __name__ == "__main__":
    main()
