//! Build script: tells the test suite whether a PostgreSQL test server was promised
//! (`ENGRAM_TEST_POSTGRES=1`, exported by `scripts/pg-test-server.sh start`). Without it the
//! PostgreSQL tests are reported as ignored, with the reason, never as a silent `ok`.
//! (A flag rather than the URL itself: a new server's URL must not rebuild the crate.)

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=ENGRAM_TEST_POSTGRES");
    println!("cargo::rustc-check-cfg=cfg(engram_postgres_tests)");
    if std::env::var_os("ENGRAM_TEST_POSTGRES").is_some_and(|v| v == "1") {
        println!("cargo::rustc-cfg=engram_postgres_tests");
    }
}
