use clap::Parser;
use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: a LIST of 150,000 objects allocates
/// and frees a quarter of a gigabyte of frames and pages between objects
/// that stay, and glibc keeps those holes resident; mimalloc groups
/// allocations by size and gives free pages back.
#[cfg(target_env = "gnu")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its `MIMALLOC_PURGE_DELAY`): free
/// pages go back to the system after this many ms; by default 10, and 10
/// times that for its arenas.
#[cfg(target_env = "gnu")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// mimalloc's `mi_option_arena_eager_commit`: whether an arena's memory is
/// committed as it is reserved.
#[cfg(target_env = "gnu")]
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Free pages given back at once, and arenas committed as they fill: after
/// a LIST of 150,000 objects the bridge's resident memory is then what it
/// keeps (3.1 KiB an object in `make bench`'s big cluster, against 4.0 with
/// the defaults), at the cost of a system call per purge.
fn tune_allocator() {
    #[cfg(target_env = "gnu")]
    // SAFETY: setting an option takes no pointer; mimalloc reads options
    // when it decides, so setting them first thing in `main` is in time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tune_allocator();
    let args = watchlife::cli::Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "watchlife=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    watchlife::test_break::announce();
    match watchlife::run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("watchlife: {e}");
            ExitCode::FAILURE
        }
    }
}
