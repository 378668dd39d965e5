"""asyncio: 20 tasks in a gather tree.  The root task ("root") gathers
"middle", three more middle tasks (mid-1..mid-3) and two sleepers; "middle"
gathers "leaf" and three unnamed sleepers; each mid-K gathers three unnamed
sleepers.  "leaf" burns CPU in burn() for SECONDS, then every task ends.
Usage: async_tree.py SECONDS [READY_FILE]: READY_FILE is written once all 20
tasks exist, with the number of tasks asyncio itself counts."""
import asyncio
import sys
import time


def burn(seconds):
    # seconds of its own CPU time: as many CPU-clock samples on a busy machine
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


async def sleeper(done):
    await done.wait()


async def leaf(seconds, done, ready):
    while not ready.is_set():
        await asyncio.sleep(0.01)
    burn(seconds)
    done.set()


async def middle(seconds, done, ready):
    await asyncio.gather(asyncio.create_task(leaf(seconds, done, ready), name="leaf"),
                         *[asyncio.create_task(sleeper(done)) for _ in range(3)])


async def mid(done):
    await asyncio.gather(*[asyncio.create_task(sleeper(done)) for _ in range(3)])


async def main(seconds, ready_file):
    asyncio.current_task().set_name("root")
    done, ready = asyncio.Event(), asyncio.Event()
    tasks = [asyncio.create_task(middle(seconds, done, ready), name="middle")]
    tasks += [asyncio.create_task(mid(done), name="mid-%d" % k) for k in (1, 2, 3)]
    tasks += [asyncio.create_task(sleeper(done), name="sleeper-%d" % k) for k in (1, 2)]
    g = asyncio.gather(*tasks)
    while len(asyncio.all_tasks()) < 20:
        await asyncio.sleep(0.005)
    if ready_file:
        with open(ready_file, "w") as f:
            f.write("%d\n" % len(asyncio.all_tasks()))
    ready.set()
    await g


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None))
