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
