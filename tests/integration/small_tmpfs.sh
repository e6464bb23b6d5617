# Sourced by the tests of a full disk (losses.sh, home_copy.sh):
# mount_small_tmpfs DIR SIZE mounts a tmpfs of SIZE (e.g. 1m) on DIR and
# unmounts it when the script exits; where mounting is not allowed (the
# tests need root for it), says so and ends the script with status 0.
mount_small_tmpfs() {
  local dir=$1 size=$2
  mkdir -p "$dir"
  if ! mount -t tmpfs -o "size=$size" tmpfs "$dir" 2>"$dir.err"; then
    echo "SKIP: cannot mount a tmpfs here ($(cat "$dir.err")); the full-disk case needs root"
    exit 0
  fi
  trap "umount '$dir' 2>/dev/null" EXIT
}
