# Shell helpers for scripts that need a throwaway loop-mounted btrfs (demo, benchmarks).
# Source it, then: loop_btrfs_create SIZE WORKDIR [mkfs args...] ; it sets LOOP_BTRFS_MNT,
# LOOP_BTRFS_DEV, LOOP_BTRFS_IMG. loop_btrfs_destroy undoes all of it; call it from a trap.

LOOP_BTRFS_MNT="" LOOP_BTRFS_DEV="" LOOP_BTRFS_IMG=""

loop_btrfs_create() {
  local size=$1 workdir=$2
  shift 2
  LOOP_BTRFS_IMG=$workdir/image
  LOOP_BTRFS_MNT=$workdir/mnt
  mkdir -p "$LOOP_BTRFS_MNT"
  truncate -s "$size" "$LOOP_BTRFS_IMG"
  mkfs.btrfs -q -f "$@" "$LOOP_BTRFS_IMG"
  # Direct I/O on the backing file: reads really reach the device instead of being
  # served from the backing file's page cache.
  LOOP_BTRFS_DEV=$(losetup -f --show --direct-io=on "$LOOP_BTRFS_IMG")
  mount -t btrfs ${LOOP_BTRFS_MOUNT_OPTIONS:+-o "$LOOP_BTRFS_MOUNT_OPTIONS"} \
    "$LOOP_BTRFS_DEV" "$LOOP_BTRFS_MNT"
}

loop_btrfs_destroy() {
  if [ -n "$LOOP_BTRFS_MNT" ] && mountpoint -q "$LOOP_BTRFS_MNT"; then
    umount "$LOOP_BTRFS_MNT" || umount -l "$LOOP_BTRFS_MNT"
  fi
  if [ -n "$LOOP_BTRFS_DEV" ] && losetup "$LOOP_BTRFS_DEV" >/dev/null 2>&1; then
    losetup -d "$LOOP_BTRFS_DEV" || true
  fi
  LOOP_BTRFS_MNT="" LOOP_BTRFS_DEV=""
}
