use clap::Parser;
use std::process::ExitCode;

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
    watchlife::test_break::announce();
    match watchlife::run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("watchlife: {e}");
            ExitCode::FAILURE
        }
    }
}
