"""asyncio: a task that waits on I/O while another computes.  The root task
("root") gathers two: "waiter" reads a line from a socket through three
coroutines of its own (fetch -> read_reply -> asyncio's StreamReader.readline),
and the line comes from a thread SECONDS after the start; "burner" burns
CPU in slices of 20 ms with short sleeps between until the line came.
Usage: async_wait.py SECONDS.  Prints one JSON line with what it measured with
perf_counter: wait_s, how long the waiter waited for the line."""
import asyncio
import json
import socket
import sys
import threading
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


async def read_reply(reader):
    return await reader.readline()


async def fetch(reader):
    return await read_reply(reader)


async def waiter(reader, got):
    t0 = time.perf_counter()
    line = await fetch(reader)
    got.set()
    return line, time.perf_counter() - t0


async def burner(got):
    while not got.is_set():
        burn(0.02)
        await asyncio.sleep(0.005)


async def main(seconds):
    asyncio.current_task().set_name("root")
    ours, theirs = socket.socketpair()
    reader, _ = await asyncio.open_connection(sock=ours)
    got = asyncio.Event()
    threading.Timer(seconds, theirs.sendall, (b"reply\n",)).start()
    (line, wait_s), _ = await asyncio.gather(
        asyncio.create_task(waiter(reader, got), name="waiter"),
        asyncio.create_task(burner(got), name="burner"))
    assert line == b"reply\n"
    print(json.dumps({"wait_s": wait_s}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1])))
