//! Build script: tells the test suite whether a PostgreSQL test server was promised
//! (`ENGRAM_TEST_POSTGRES=1`, exported by `scripts/pg-test-server.sh start`) and whether the
//! local embedding model is there (`ENGRAM_TEST_MODEL_DIR`, from `scripts/fetch-model.sh`) and
//! whether a browser is (`ENGRAM_TEST_BROWSER=1`: Debian's chromium and chromium-driver).
//! Without them those tests are reported as ignored, with the reason, never as a silent `ok`.
//! (A flag rather than the server's URL: a new server's URL must not rebuild the crate.)

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    // sqlx::migrate! embeds the migrations: a new file must rebuild the crate.
    println!("cargo::rerun-if-changed=migrations");
    println!("cargo::rerun-if-env-changed=ENGRAM_TEST_POSTGRES");
    println!("cargo::rustc-check-cfg=cfg(engram_postgres_tests)");
    if std::env::var_os("ENGRAM_TEST_POSTGRES").is_some_and(|v| v == "1") {
        println!("cargo::rustc-cfg=engram_postgres_tests");
    }
    println!("cargo::rerun-if-env-changed=ENGRAM_TEST_BROWSER");
    println!("cargo::rustc-check-cfg=cfg(engram_browser_tests)");
    if std::env::var_os("ENGRAM_TEST_BROWSER").is_some_and(|v| v == "1") {
        println!("cargo::rustc-cfg=engram_browser_tests");
    }
    println!("cargo::rerun-if-env-changed=ENGRAM_TEST_MODEL_DIR");
    println!("cargo::rustc-check-cfg=cfg(engram_model_tests)");
    if std::env::var_os("ENGRAM_TEST_MODEL_DIR").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=engram_model_tests");
    }
}
