"""The disk-images data set of issue #16, shared by tools/bench-images and tools/bench-dedupe.

A seeded set of random files (sizes log-uniform 1 KiB..4 MiB, about 280 MiB in all; the same
every run), written into image a.raw in one order and b.raw in a shuffled order, each file at
a 4 KiB-aligned offset with its tail zero-padded to 4 KiB, and c.raw, a byte copy of a.raw
with 68 KiB of random bytes inserted at the front. "Perfect" is the 4 KiB-block figure: data
blocks minus distinct data blocks, in bytes.

  python3 tools/lib/images.py OUTDIR   # writes OUTDIR/{a,b,c}.raw and OUTDIR/perfect
"""

import hashlib
import math
import os
import random
import sys

IMAGES = ("a.raw", "b.raw", "c.raw")
SEED = 16
TOTAL = 280 << 20
INSERT = 68 << 10


def make_images(out):
    """Writes the three images and the file 'perfect' into directory out. Returns
    (number of files, bytes of one image a.raw, perfect bytes)."""
    rng = random.Random(SEED)
    files = []
    total = 0
    while total < TOTAL:
        n = int(math.exp(rng.uniform(math.log(1024), math.log(4 << 20))))
        files.append(rng.randbytes(n))
        total += n

    def image(order):
        parts = []
        for i in order:
            f = files[i]
            parts.append(f + bytes(-len(f) % 4096))
        return b"".join(parts)

    a = image(range(len(files)))
    order = list(range(len(files)))
    rng.shuffle(order)
    b = image(order)
    c = rng.randbytes(INSERT) + a
    blocks, distinct = 0, set()
    for name, data in zip(IMAGES, (a, b, c)):
        with open(os.path.join(out, name), "wb") as fh:
            fh.write(data)
        for off in range(0, len(data), 4096):
            blocks += 1
            distinct.add(hashlib.blake2b(data[off:off + 4096], digest_size=16).digest())
    perfect = (blocks - len(distinct)) * 4096
    with open(os.path.join(out, "perfect"), "w") as fh:
        fh.write(str(perfect))
    return len(files), len(a), perfect


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    nfiles, size, perfect = make_images(argv[0])
    print(f"files {nfiles}, image {size} bytes, perfect 4K figure {perfect}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
