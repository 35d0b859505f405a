"""Every kernel of the memory lab at small sizes: odd ones and ends on 16-byte and 4-KiB
boundaries; each result checked. The measurements allocate their own buffers at the sizes asked
for (cuda/core/resources.cuh). See _common.py.

    python3 tools/sanitize/memory.py [--inputs both|device]
"""

from _common import gl, require, start

KiB = 1 << 10


def main():
    start(__doc__)
    mem = gl.memory
    for direction in ("h2d", "d2h"):
        for memory in ("pageable", "pinned", "mapped", "managed"):
            t = mem.bandwidth_test(direction, memory, sizes=[16, 4 * KiB, 4 * KiB + 16], repeat=1,
                                   progress=False)
            require(all(t.column("intact")), f"bandwidth {direction} {memory}")
    require(all(mem.bandwidth_test("d2d", "device", sizes=[16, 4 * KiB], repeat=1,
                                   progress=False).column("intact")), "bandwidth d2d")
    for n in (4096, 4099):
        mem.access_pattern(n=n, repeat=1, progress=False)
    require(all(mem.pointer_chase(sizes=[4 * KiB, 64 * KiB], strides=[4, 64], steps=300,
                                  repeat=1, progress=False).column("chain_ok")), "pointer chase")
    mem.bank_conflicts(strides=[1, 7, 32], iterations=32, repeat=1, progress=False)
    mem.constant_memory(iterations=32, repeat=1)
    print("sanitize/memory: every memory lab kernel ran and checked out")


if __name__ == "__main__":
    main()
