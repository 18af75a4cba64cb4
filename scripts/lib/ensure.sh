# What the scripts/ensure-*.sh scripts share. Each sources it near its top:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"
# It defines functions only; nothing runs when it is sourced.

# `parse_check_option "$@"`: CHECK_ONLY=true with --check, false with no
# argument; anything else is a usage error (exit 2).
parse_check_option() {
  CHECK_ONLY=false
  case ${1:-} in
    --check) CHECK_ONLY=true ;;
    "") ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
  esac
}

# `set_cache_root`: CACHE (read-only), the cache root: WATCHLIFE_CACHE, or
# $HOME/.cache/watchlife, HOME taken from the password database when the
# environment has none.
set_cache_root() {
  if [[ -z ${WATCHLIFE_CACHE:-} && -z ${HOME:-} ]]; then
    HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
  fi
  readonly CACHE=${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}
}

# `log_as TAG`: from here on, `log` writes a line tagged [TAG] to stderr,
# `die` logs an error and exits 1, and `elapsed` says how many seconds have
# passed since this call.
log_as() {
  LOG_TAG=$1
  START=$SECONDS
}
log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
elapsed() { printf '%ds' "$((SECONDS - START))"; }

# `lock_or_wait DIR WHAT`: makes DIR and holds DIR/.lock (on descriptor 9)
# until the script ends; while another process holds it, says that it is
# WHAT and waits for it.
lock_or_wait() {
  mkdir -p "$1"
  exec 9>"$1/.lock"
  if ! flock -n 9; then
    log "another invocation is $2; waiting for it"
    flock 9
  fi
}

# `add_root_sandbox OPTIONS`: as root, apt downloads as the _apt user, who
# cannot write into root-owned directories (apt would fall back to root with
# a warning): then adds the option that keeps it root to the array OPTIONS.
add_root_sandbox() {
  local -n apt_options=$1
  if ((EUID == 0)); then
    apt_options+=(-o "APT::Sandbox::User=root")
  fi
}

# apt's locks: `apt-get install` waits for the dpkg ones when asked
# (DPkg::Lock::Timeout), but `apt-get update` fails at once on the lists
# lock, so a set-up run beside unattended-upgrades (or any apt command)
# failed half-way.
APT_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock
  /var/cache/apt/archives/lock)
# How long to wait for another apt or dpkg run before failing: an upgrade of
# a whole system can take this long.
APT_LOCK_WAIT_SECONDS=${WATCHLIFE_APT_LOCK_WAIT_SECONDS:-1800}

# `apt_locks_held`: succeeds when another process holds one of apt's locks
# (probed as apt takes them: a POSIX record lock, taken and let go at once).
apt_locks_held() {
  ${SUDO:-} python3 -c '
import fcntl, os, sys
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        continue
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(0)
    finally:
        os.close(fd)
sys.exit(1)
' "${APT_LOCKS[@]}"
}

# `wait_for_apt`: returns once no other process holds apt's locks, saying
# why it waits; fails after APT_LOCK_WAIT_SECONDS.
wait_for_apt() {
  local waited=0
  while apt_locks_held; do
    ((waited == 0)) && log "another apt or dpkg run holds the package lock; waiting for it to finish"
    if ((waited >= APT_LOCK_WAIT_SECONDS)); then
      log "ERROR: the package lock is still held after ${waited}s"
      return 1
    fi
    sleep 2
    waited=$((waited + 2))
  done
}

# `apt_get ARGS...`: apt-get ARGS (as root, through $SUDO when set) once
# apt's locks are free, tried up to 5 times (a mirror can fail for a moment,
# and another run can take the lock between the wait and apt-get).
apt_get() {
  local attempt
  for attempt in 1 2 3 4 5; do
    wait_for_apt || return 1
    if ${SUDO:-} env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 "$@" >&2; then
      return 0
    fi
    ((attempt < 5)) && { log "apt-get $1 failed (attempt $attempt of 5); retrying in 15s"; sleep 15; }
  done
  return 1
}
