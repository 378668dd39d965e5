"""asyncio.TaskGroup: task "main" awaits task "outer", which opens a group and creates "crunch", which
burns CPU in burn() for SECONDS, and two sleepers that wait for it.
Usage: async_group.py SECONDS"""
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


async def crunch(seconds, done):
    await asyncio.sleep(0.05)  # the group is entered, every task exists
    burn(seconds)
    done.set()


async def sleeper(done):
    await done.wait()


async def outer(seconds):
    done = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(crunch(seconds, done), name="crunch")
        for k in (1, 2):
            tg.create_task(sleeper(done), name="sleeper-%d" % k)


async def main(seconds):
    asyncio.current_task().set_name("main")
    await asyncio.create_task(outer(seconds), name="outer")


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1])))
