//! mdBook, as `scripts/ensure-mdbook.sh` installs it (outside the
//! repository, once per machine): for the test of `mdbook-watchlife` in a
//! real book.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the script says `mdbook` is, asked once per test process (it
/// returns at once when mdBook is installed; `make test` installs it before
/// any test runs). Panics if the script fails.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let script = crate::workspace().join("scripts/ensure-mdbook.sh");
        crate::real_cluster::scripts::run(&script, &[])
            .remove("MDBOOK")
            .unwrap_or_else(|| panic!("{} printed no MDBOOK=", script.display()))
    })
}
