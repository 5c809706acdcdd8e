#!/bin/bash
# real-images.sh: issue #39's data set, disk images of real trees.
#
#   tools/lib/real-images.sh OUTDIR [SIZE_MIB [DIR...]]
#
# Writes OUTDIR/{a,b,c}.raw and OUTDIR/perfect:
#   a.raw  an ext4 image (mkfs.ext4 defaults) of SIZE_MIB (default 1200), filled through a
#          loop mount with `cp -a` of DIR... in the order given (default: the compiler's
#          library directory, /usr/include, /usr/share/doc);
#   b.raw  the same size, a 37 MiB random file first, then the same directories in reverse
#          order;
#   c.raw  a byte copy of a.raw with 68 KiB of random bytes inserted at 300 MiB (or at a
#          quarter of the image when it is smaller), holes kept as holes;
#   perfect  what a perfect 4 KiB-block dedupe frees over the three: data blocks minus
#          distinct data blocks, in bytes (holes skipped).
# Prints what it used ("dir D" a directory, "random_mib N", "insert_at_mib N"), then the
# block counts (tools/bench-dedupe's real-images scenario records them).
# Real filesystems, not concatenated files: block groups, metadata, small files at ext4's
# placement, free space between them. Run as root (loop mounts). Needs e2fsprogs, python3.
set -euo pipefail
OUT=$1
SIZE=${2:-1200}
shift $(( $# < 2 ? $# : 2 ))
if [ $# -eq 0 ]; then
  set -- "$(dirname "$(gcc -print-libgcc-file-name 2>/dev/null || echo /usr/lib/gcc/x)")" \
         /usr/include /usr/share/doc
fi
for d in "$@"; do [ -d "$d" ] || { echo "real-images: $d is not a directory" >&2; exit 2; }; done
mkdir -p "$OUT"
MNT=$(mktemp -d)
trap 'mountpoint -q "$MNT" && umount "$MNT"; rmdir "$MNT"' EXIT

fill() {   # image, then directories in order; a random file of $RANDOM_MIB first if set
  local img=$1; shift
  rm -f "$img"
  truncate -s "${SIZE}M" "$img"
  mkfs.ext4 -q -F "$img"
  mount -o loop "$img" "$MNT"
  if [ "${RANDOM_MIB:-0}" -gt 0 ]; then
    head -c "${RANDOM_MIB}M" /dev/urandom > "$MNT/random.bin"
  fi
  local i=0
  for d in "$@"; do
    i=$((i + 1))
    mkdir "$MNT/$i"
    cp -a "$d" "$MNT/$i/"
  done
  umount "$MNT"
}

RMIB=$(( SIZE >= 400 ? 37 : SIZE / 16 ))
AT=$(( SIZE >= 1200 ? 300 : SIZE / 4 ))
printf 'dir %s\n' "$@"
echo "random_mib $RMIB"
echo "insert_at_mib $AT"

fill "$OUT/a.raw" "$@"
dirs=("$@"); rev=()
for ((i=${#dirs[@]}-1; i>=0; i--)); do rev+=("${dirs[i]}"); done
RANDOM_MIB=$RMIB fill "$OUT/b.raw" "${rev[@]}"

python3 - "$OUT" "$AT" <<'PY'
import hashlib, os, sys
out, at = sys.argv[1], int(sys.argv[2]) << 20
def data_ranges(fd, size):
    off = 0
    while off < size:
        try:
            start = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            return
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, end
        off = end
# c.raw: a's bytes with 68 KiB inserted at `at`; a's holes stay holes (shifted past `at`).
ins = os.urandom(68 << 10)
a = os.open(os.path.join(out, "a.raw"), os.O_RDONLY)
size = os.fstat(a).st_size
c = os.open(os.path.join(out, "c.raw"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.ftruncate(c, size + len(ins))
for start, end in data_ranges(a, size):
    pos = start
    while pos < end:
        n = min(end - pos, 8 << 20)
        buf = os.pread(a, n, pos)
        cut = min(max(at - pos, 0), n)   # the part before the insertion point stays put
        if cut:
            os.pwrite(c, buf[:cut], pos)
        if cut < n:
            os.pwrite(c, buf[cut:], pos + cut + len(ins))
        pos += n
os.pwrite(c, ins, at)
os.close(c)
blocks, distinct = 0, set()
for name in ("a.raw", "b.raw", "c.raw"):
    fd = os.open(os.path.join(out, name), os.O_RDONLY)
    for start, end in data_ranges(fd, os.fstat(fd).st_size):
        start -= start % 4096
        pos = start
        while pos < end:
            buf = os.pread(fd, min(end - pos, 8 << 20), pos)
            for o in range(0, len(buf), 4096):
                blocks += 1
                distinct.add(hashlib.blake2b(buf[o:o + 4096], digest_size=16).digest())
            pos += len(buf)
    os.close(fd)
with open(os.path.join(out, "perfect"), "w") as f:
    f.write(str((blocks - len(distinct)) * 4096))
print(f"data blocks {blocks}, distinct {len(distinct)}, perfect {(blocks - len(distinct)) * 4096}")
PY
