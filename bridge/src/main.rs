use clap::Parser;
use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: a LIST of 150,000 objects allocates
/// and frees a quarter of a gigabyte of frames and pages between objects
/// that stay, and glibc keeps those holes resident; mimalloc groups
/// allocations by size and gives free pages back.
#[cfg(target_env = "gnu")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let args = watchlife::cli::Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "watchlife=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match watchlife::run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("watchlife: {e}");
            ExitCode::FAILURE
        }
    }
}
