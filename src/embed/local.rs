//! all-MiniLM-L6-v2 run in-process with ONNX Runtime (the `ort` crate; the runtime's shared
//! library is loaded from a path, never downloaded) from a local directory built by
//! `scripts/fetch-model.sh`: `tokenizer.json`, `model_int8.onnx` (int8, the default) or
//! `model.onnx` (f32), and `libonnxruntime.so`.

use super::{EmbedError, Embedder};
use async_trait::async_trait;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokenizers::{Tokenizer, TruncationParams};

/// Which of the two models of the directory runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// `model_int8.onnx`: weights and activations quantized to int8 (several times faster,
    /// vectors within a few hundredths of cosine of the f32 ones).
    Int8,
    /// `model.onnx`: the weights as published.
    F32,
}

impl Precision {
    /// The model file of this precision.
    pub fn file(self) -> &'static str {
        match self {
            Precision::Int8 => "model_int8.onnx",
            Precision::F32 => "model.onnx",
        }
    }

    /// The name of the vector space it makes.
    fn model_name(self) -> &'static str {
        match self {
            Precision::Int8 => "all-MiniLM-L6-v2-int8",
            Precision::F32 => "all-MiniLM-L6-v2",
        }
    }
}

/// all-MiniLM-L6-v2 (384 dimensions) on the CPU with ONNX Runtime, from local files.
pub struct LocalEmbedder {
    inner: Arc<Inner>,
    precision: Precision,
    /// The start of the model file's SHA-256: other weights under the same name are another
    /// vector space.
    weights: String,
}

struct Inner {
    tokenizer: Tokenizer,
    /// The indexer's work: one single-threaded session per core, each taking a batch's next
    /// text as it finishes one (short chat turns gain little from threads inside one run:
    /// measured ~380 texts/s with one session on 2 threads).
    background: Vec<Mutex<Session>>,
    /// A question, on every core (it never waits behind the indexer): a long question's
    /// vector is made while the other core is idle between the searches beside it (dev60,
    /// 2 cores: query p99 26.8 -> 22.3 and 26.7 -> 26.5 ms in two runs, same recall).
    reply: Mutex<Session>,
    dimensions: usize,
}

/// The process's one ONNX Runtime environment (the runtime allows one), made by the first
/// model loaded with the library it names.
static ENVIRONMENT: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

fn environment(library: &Path) -> Result<ort::environment::Environment, EmbedError> {
    ENVIRONMENT
        .get_or_init(|| {
            ort::init_from(library)
                .map_err(|e| e.to_string())?
                .with_name("engram")
                .with_telemetry(false)
                .build()
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| EmbedError::Load(format!("ONNX Runtime ({}): {e}", library.display())))
}

/// The processor's integer instructions that decide how ONNX Runtime adds up the int8 model's
/// products (its MLAS kernels choose by them, `platform.cpp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Int8Units {
    /// AVX2.
    pub avx2: bool,
    /// FMA3: the runtime's AVX2 kernels need it too (without it, SSE kernels, which never
    /// clip).
    pub fma: bool,
    /// AVX-512 BW, DQ and VL: the runtime's "AVX-512 core" kernels.
    pub avx512_core: bool,
    /// AVX-512 VNNI.
    pub avx512_vnni: bool,
    /// AVX-VNNI (the VEX form, on processors without AVX-512).
    pub avx_vnni: bool,
}

impl Int8Units {
    /// This processor's.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            Int8Units {
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
                avx512_core: std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx512vl"),
                avx512_vnni: std::arch::is_x86_feature_detected!("avx512vnni"),
                avx_vnni: std::arch::is_x86_feature_detected!("avxvnni"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Int8Units::default()
    }

    /// True when the runtime's u8 × s8 kernels would add pairs of products in 16 bits and
    /// clip them (`vpmaddubsw`: AVX2 without AVX-VNNI, and the AVX-512 core kernels, which
    /// replace AVX-VNNI's, without AVX-512 VNNI): two products of 255 × 127
    /// make 64,770, kept as 32,767. The model's weights use the whole ±127, so its vectors
    /// would then follow the processor: against a VNNI processor's (32-bit sums, exact),
    /// cosine 0.97 on short chat lines ("Thanks a lot, see ya!"). There the sessions ask for
    /// the u8 × u8 kernels instead (`session.x64quantprecision`: each weight w becomes
    /// w + 128, its zero point with it), whose sums are exact: the same sums as with VNNI
    /// (the vectors then differ by float rounding only), a fifth or so slower.
    pub fn clip_int8_sums(self) -> bool {
        let vnni = if self.avx512_core {
            self.avx512_vnni
        } else {
            self.avx_vnni
        };
        self.avx2 && self.fma && !vnni
    }
}

/// ONNX Runtime's optimizer that would fuse each residual sum and LayerNormalization of the
/// models `scripts/build-onnx-model.py` builds into SkipLayerNormalization, whose CPU kernel is
/// three times slower (18% of the int8 model's time on one core, against 6%).
const SKIP_LN_FUSION: &str = "SkipLayerNormFusion";

/// The layout of the graphs `scripts/build-onnx-model.py` builds today (its `GRAPH`, in the
/// model's `engram_graph` property): 2 runs LayerNormalization where 1 (no property) ran
/// SkipLayerNormalization. An older file still runs, slower.
const GRAPH: u32 = 2;

/// The graph layout a model's `engram_graph` property names (1 without one).
fn graph_version(property: Option<&str>) -> u32 {
    property.and_then(|v| v.trim().parse().ok()).unwrap_or(1)
}

/// A session of `model` on `threads` cores, its threads waiting without spinning; `exact`
/// asks for the int8 kernels that never clip a sum (`Int8Units::clip_int8_sums`).
fn session(
    env: &ort::environment::Environment,
    model: &Path,
    threads: usize,
    exact: bool,
) -> Result<Session, EmbedError> {
    let load = |e: ort::Error| EmbedError::Load(format!("{}: {e}", model.display()));
    session_options(env, threads, exact)
        .map_err(load)?
        .commit_from_file(model)
        .map_err(load)
}

/// `session`'s options, before its model.
fn session_options(
    env: &ort::environment::Environment,
    threads: usize,
    exact: bool,
) -> ort::Result<ort::session::builder::SessionBuilder> {
    let builder = Session::builder(env)?
        .with_optimization_level(GraphOptimizationLevel::All)?
        .with_intra_threads(threads)?
        .with_intra_op_spinning(false)?
        .with_disabled_optimizers(SKIP_LN_FUSION)?;
    Ok(if exact {
        builder.with_precise_qmm()?
    } else {
        builder
    })
}

impl LocalEmbedder {
    /// The files a directory needs for `precision`.
    pub fn files(precision: Precision) -> [&'static str; 3] {
        ["tokenizer.json", precision.file(), "libonnxruntime.so"]
    }

    /// True when `dir` holds everything the model of `precision` needs.
    pub fn present(dir: &Path, precision: Precision) -> bool {
        Self::files(precision).iter().all(|f| dir.join(f).is_file())
    }

    /// Loads the model of `precision` from `dir`, with ONNX Runtime from `library` (None: the
    /// directory's `libonnxruntime.so`); texts are cut at `max_tokens` word pieces.
    ///
    /// Each text runs alone: the int8 model quantizes activations per run, so a text's vector
    /// would otherwise depend on what it was batched with (cosine 0.99 instead of 1), and on chat
    /// turns one text a time is also faster (no padding; measured 514 against 418 texts/s in
    /// sorted batches of 16; long assistant answers lose a fifth).
    pub fn load(
        dir: &Path,
        precision: Precision,
        library: Option<&Path>,
        max_tokens: usize,
    ) -> Result<Self, EmbedError> {
        Self::load_for(dir, precision, library, max_tokens, Int8Units::detect())
    }

    /// `load`, with the int8 kernels chosen for a processor of `units` (`load` reads this
    /// one's): a test can run the kernels whose sums clip on a processor that has them.
    pub fn load_for(
        dir: &Path,
        precision: Precision,
        library: Option<&Path>,
        max_tokens: usize,
        units: Int8Units,
    ) -> Result<Self, EmbedError> {
        let file = |name: &str| -> Result<PathBuf, EmbedError> {
            let p = dir.join(name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(EmbedError::Load(format!(
                    "{} is missing (embed.model_dir = {}; scripts/fetch-model.sh makes it)",
                    p.display(),
                    dir.display()
                )))
            }
        };
        let mut tokenizer = Tokenizer::from_file(file("tokenizer.json")?)
            .map_err(|e| EmbedError::Load(format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| EmbedError::Load(e.to_string()))?;
        // The file pads every text to 128 tokens; a text runs alone, unpadded.
        tokenizer.with_padding(None);
        let model = file(precision.file())?;
        let library = match library {
            Some(l) => l.to_path_buf(),
            None => file("libonnxruntime.so")?,
        };
        let weights = weights_hash(&model)?;
        let env = environment(&library)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let exact = precision == Precision::Int8 && units.clip_int8_sums();
        if exact {
            tracing::info!(
                model = precision.model_name(),
                "this processor has no VNNI: the int8 model runs on ONNX Runtime's exact \
                 u8 x u8 kernels (the same sums as with VNNI, somewhat slower)"
            );
        }
        let background = (0..cores)
            .map(|_| session(&env, &model, 1, exact).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        let reply = session(&env, &model, cores, exact)?;
        // A hint only: a model whose properties cannot be read still runs.
        let built = reply.metadata().map(|m| m.custom("engram_graph"));
        if built.is_ok_and(|b| graph_version(b.as_deref()) < GRAPH) {
            tracing::warn!(
                model = %model.display(),
                "the model files were built by an older scripts/build-onnx-model.py: \
                 scripts/fetch-model.sh builds them again, faster (the database then embeds \
                 its messages again once, as for any new model)"
            );
        }
        let dimensions = reply
            .outputs()
            .first()
            .and_then(|o| o.dtype().tensor_shape().and_then(|s| s.last().copied()))
            .filter(|d| *d > 0)
            .ok_or_else(|| EmbedError::Load(format!("{}: no vector output", model.display())))?
            as usize;
        Ok(LocalEmbedder {
            inner: Arc::new(Inner {
                tokenizer,
                background,
                reply: Mutex::new(reply),
                dimensions,
            }),
            precision,
            weights,
        })
    }
}

/// The first 16 hex digits of the SHA-256 of the model file (read in pieces).
fn weights_hash(model: &Path) -> Result<String, EmbedError> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let load = |e: std::io::Error| EmbedError::Load(format!("{}: {e}", model.display()));
    let mut file = std::fs::File::open(model).map_err(load)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(load)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The share of the words of `text` that `encoding` (of `text`) holds as one known word piece
/// (`share_known`).
fn known_share(text: &str, encoding: &tokenizers::Encoding) -> f64 {
    // Each word's byte span and pieces, in order (special tokens belong to no word).
    let mut words: Vec<(u32, usize, usize, Vec<&str>)> = Vec::new();
    let pieces = encoding
        .get_word_ids()
        .iter()
        .zip(encoding.get_tokens())
        .zip(encoding.get_offsets());
    for ((word, token), &(from, to)) in pieces {
        let Some(word) = *word else { continue };
        match words.last_mut() {
            Some(last) if last.0 == word => {
                last.2 = to;
                last.3.push(token);
            }
            _ => words.push((word, from, to, vec![token])),
        }
    }
    share_known(
        words
            .iter()
            .map(|(_, from, to, pieces)| (text.get(*from..*to).unwrap_or(""), &pieces[..])),
    )
}

/// Fewer words with a letter than this say too little of a text's language to judge it.
const FEWEST_WORDS: usize = 3;

/// The share of `words` (each its text and its word pieces) that the model knows: one piece
/// with a letter ("iphone ##15" is known), none unknown. Words without a letter (numbers,
/// punctuation, emoji) say nothing of a language and are left out; a word of one piece of one
/// letter outside ASCII (each Chinese character, kanji too, is a word of its own, as is the
/// Russian "в") is a piece the vocabulary holds but the model barely learned, so it counts as
/// unknown, while the French "à" is read as "a". 1 when fewer than `FEWEST_WORDS` words hold
/// a letter.
fn share_known<'a>(words: impl IntoIterator<Item = (&'a str, &'a [&'a str])>) -> f64 {
    let has_letter = |t: &str| t.chars().any(char::is_alphabetic);
    let (mut known, mut all) = (0usize, 0usize);
    for (text, pieces) in words {
        let letters = text.chars().filter(|c| c.is_alphabetic()).count();
        if letters == 0 {
            continue;
        }
        all += 1;
        let unknown = pieces.contains(&"[UNK]");
        let lettered = pieces.iter().filter(|p| has_letter(p)).count();
        let lone_letter = letters == 1 && pieces.iter().any(|p| !p.is_ascii());
        if !unknown && lettered == 1 && !lone_letter {
            known += 1;
        }
    }
    if all < FEWEST_WORDS {
        1.0
    } else {
        known as f64 / all as f64
    }
}

impl Inner {
    /// The unit vector of `text`, run alone on `session`.
    fn embed_one(&self, session: &mut Session, text: &str) -> Result<Vec<f32>, EmbedError> {
        let model = |e: ort::Error| EmbedError::Model(e.to_string());
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| EmbedError::Model(e.to_string()))?;
        let len = encoding.get_ids().len();
        let ids: Vec<i64> = encoding.get_ids().iter().map(|&x| x as i64).collect();
        let mask: Vec<i64> = encoding
            .get_attention_mask()
            .iter()
            .map(|&x| x as i64)
            .collect();
        let ids = Tensor::from_array(([1, len], ids)).map_err(model)?;
        let mask = Tensor::from_array(([1, len], mask)).map_err(model)?;
        let outputs = session
            .run(ort::inputs!["input_ids" => ids, "attention_mask" => mask])
            .map_err(model)?;
        let (_, flat) = outputs[0].try_extract_tensor::<f32>().map_err(model)?;
        if flat.len() != self.dimensions {
            return Err(EmbedError::Model(format!(
                "{} numbers for a vector of {}",
                flat.len(),
                self.dimensions
            )));
        }
        // The graph normalises; normalising again only guards against a hand-built model.
        let mut v = flat.to_vec();
        super::normalize(&mut v);
        Ok(v)
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        self.precision.model_name()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    fn identity(&self) -> crate::domain::ModelIdentity {
        crate::domain::ModelIdentity {
            provider: "local".into(),
            model: self.precision.model_name().into(),
            dimensions: self.inner.dimensions,
            revision: self.weights.clone(),
        }
    }

    fn known_share(&self, text: &str) -> f64 {
        // A text the tokenizer fails on is read by none of the model's words.
        self.inner
            .tokenizer
            .encode(text, true)
            .map_or(0.0, |encoding| known_share(text, &encoding))
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        // CPU-bound: off the async workers, so replies keep flowing while the indexer runs.
        tokio::task::spawn_blocking(move || {
            // A panic in an earlier call (a bug, reported then) left the session as it was:
            // it is used again rather than refusing every text from then on.
            let poisoned = std::sync::PoisonError::into_inner;
            // One text is a question on the reply path: its own session, so it never waits
            // behind the indexer. More are the indexer's, on the background sessions.
            if texts.len() == 1 {
                let mut session = inner.reply.lock().unwrap_or_else(poisoned);
                return Ok(vec![inner.embed_one(&mut session, &texts[0])?]);
            }
            // Each core's session takes the next text as it finishes one, so a core whose
            // texts were short does not wait idle for the other's long ones.
            let next = AtomicUsize::new(0);
            let failed = AtomicBool::new(false);
            std::thread::scope(|scope| {
                let runs: Vec<_> = inner
                    .background
                    .iter()
                    .take(texts.len())
                    .map(|session| {
                        let (inner, texts, next, failed) = (&inner, &texts, &next, &failed);
                        scope.spawn(move || -> Result<Vec<(usize, Vec<f32>)>, EmbedError> {
                            // A panic stops the other sessions too, as an error does.
                            let _stop = StopOnPanic(failed);
                            let mut session = session.lock().unwrap_or_else(poisoned);
                            let mut done = Vec::new();
                            while !failed.load(Ordering::Relaxed) {
                                let i = next.fetch_add(1, Ordering::Relaxed);
                                let Some(text) = texts.get(i) else { break };
                                match inner.embed_one(&mut session, text) {
                                    Ok(v) => done.push((i, v)),
                                    Err(e) => {
                                        failed.store(true, Ordering::Relaxed);
                                        return Err(e);
                                    }
                                }
                            }
                            Ok(done)
                        })
                    })
                    .collect();
                let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
                let mut first_error = None;
                for run in runs {
                    match run.join() {
                        Ok(Ok(done)) => done.into_iter().for_each(|(i, v)| out[i] = Some(v)),
                        Ok(Err(e)) => first_error = first_error.or(Some(e)),
                        // The process's panic hook logged where and why (cut short: the
                        // message may quote a person's text, which an error must not carry).
                        Err(_) => {
                            first_error =
                                first_error.or(Some(EmbedError::Model("the model panicked".into())))
                        }
                    }
                }
                if let Some(e) = first_error {
                    return Err(e);
                }
                // Every index was taken by a session that returned Ok: a gap would be a bug.
                out.into_iter()
                    .map(|v| v.ok_or_else(|| EmbedError::Model("a text was not embedded".into())))
                    .collect()
            })
        })
        .await
        .map_err(|e| EmbedError::Model(e.to_string()))?
    }
}

/// Sets the flag when dropped by a panicking thread.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Int8Units, share_known};

    /// The sessions run the model's residual sums and LayerNormalization as built, with or
    /// without the exact kernels: ONNX Runtime's optimizer would fuse them into
    /// SkipLayerNormalization, whose kernel is three times slower. Read from the graph the
    /// runtime optimized, beside a session left to fuse them (which must show the fused op).
    #[cfg_attr(
        not(engram_model_tests),
        ignore = "needs the local model: eval \"$(scripts/fetch-model.sh)\", then cargo test"
    )]
    #[test]
    fn sessions_leave_layer_normalization_unfused() {
        use super::{
            GRAPH, GraphOptimizationLevel, Precision, Session, environment, graph_version, session,
            session_options,
        };
        use ort::session::builder::SessionBuilder;
        let dir = std::path::PathBuf::from(std::env::var("ENGRAM_TEST_MODEL_DIR").unwrap());
        let env = environment(&dir.join("libonnxruntime.so")).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let optimized = |builder: SessionBuilder, name: &str| {
            let out = tmp.path().join(name);
            builder
                .with_optimized_model_path(&out)
                .unwrap()
                .commit_from_file(dir.join(Precision::Int8.file()))
                .unwrap();
            std::fs::read(&out).unwrap()
        };
        // Nodes whose op type is `op`: the protobuf field (4, a string of its length), not
        // the name inside another op's or a node's name.
        let count = |graph: &[u8], op: &str| {
            let field = [&[0x22, op.len() as u8][..], op.as_bytes()].concat();
            graph.windows(field.len()).filter(|w| *w == field).count()
        };
        for precision in [Precision::Int8, Precision::F32] {
            let model = session(&env, &dir.join(precision.file()), 1, false).unwrap();
            let built = model.metadata().unwrap().custom("engram_graph");
            assert_eq!(graph_version(built.as_deref()), GRAPH, "{precision:?}");
        }
        for exact in [false, true] {
            let graph = optimized(session_options(&env, 1, exact).unwrap(), "ours.onnx");
            assert_eq!(count(&graph, "SkipLayerNormalization"), 0, "exact {exact}");
            assert_eq!(count(&graph, "LayerNormalization"), 12, "exact {exact}");
        }
        let fusing = Session::builder(&env)
            .unwrap()
            .with_optimization_level(GraphOptimizationLevel::All)
            .unwrap();
        let graph = optimized(fusing, "fused.onnx");
        assert_eq!(count(&graph, "SkipLayerNormalization"), 12);
        assert_eq!(count(&graph, "LayerNormalization"), 0);
    }

    #[test]
    fn a_model_without_a_graph_version_is_the_first_layout() {
        use super::{GRAPH, graph_version};
        assert_eq!(graph_version(None), 1);
        assert_eq!(graph_version(Some("garbled")), 1);
        assert_eq!(graph_version(Some("2")), 2);
        assert!(graph_version(None) < GRAPH);
        assert!(graph_version(Some(&GRAPH.to_string())) >= GRAPH);
    }

    #[test]
    fn int8_sums_are_exact_only_with_vnni() {
        let avx2 = Int8Units {
            avx2: true,
            fma: true,
            ..Default::default()
        };
        // AVX2 alone, and AVX-512 without VNNI, clip: the exact kernels are asked for.
        assert!(avx2.clip_int8_sums());
        let skylake = Int8Units {
            avx512_core: true,
            ..avx2
        };
        assert!(skylake.clip_int8_sums());
        // AVX-512 VNNI on the AVX-512 core kernels, or AVX-VNNI: exact already.
        let vnni = Int8Units {
            avx512_vnni: true,
            ..skylake
        };
        assert!(!vnni.clip_int8_sums());
        let alder_lake = Int8Units {
            avx_vnni: true,
            ..avx2
        };
        assert!(!alder_lake.clip_int8_sums());
        // VNNI without the core kernels is not what the runtime's VNNI kernels need; the
        // core kernels replace AVX-VNNI's, so AVX-VNNI beside them does not help.
        let odd = Int8Units {
            avx512_vnni: true,
            ..avx2
        };
        assert!(odd.clip_int8_sums());
        let odder = Int8Units {
            avx_vnni: true,
            ..skylake
        };
        assert!(odder.clip_int8_sums());
        // AVX2 without FMA runs the SSE kernels, which never clip.
        let no_fma = Int8Units { fma: false, ..avx2 };
        assert!(!no_fma.clip_int8_sums());
        // Without AVX2 (or off x86) the runtime has one kind of kernel: nothing to ask.
        assert!(!Int8Units::default().clip_int8_sums());
    }

    fn share(words: &[(&str, &[&str])]) -> f64 {
        share_known(words.iter().map(|(t, p)| (*t, *p)))
    }

    #[test]
    fn the_share_counts_words_the_vocabulary_holds_whole() {
        let english: &[(&str, &[&str])] = &[
            ("What", &["what"]),
            ("did", &["did"]),
            ("I", &["i"]),
            ("buy", &["buy"]),
            ("?", &["?"]),
        ];
        assert_eq!(share(english), 1.0);
        // Split in pieces, or unknown: not read.
        let german: &[(&str, &[&str])] = &[
            ("Wann", &["wan", "##n"]),
            ("hat", &["hat"]),
            ("Jonas", &["jonas"]),
            ("Führerscheinprüfung", &["fu", "##hrer", "##sche", "##in"]),
            ("bestanden", &["[UNK]"]),
        ];
        assert_eq!(share(german), 0.4);
        // A number after a known word is still the word; a number alone is no word.
        let digits: &[(&str, &[&str])] = &[
            ("iPhone15", &["iphone", "##15"]),
            ("2023", &["2023"]),
            ("my", &["my"]),
            ("new", &["new"]),
        ];
        assert_eq!(share(digits), 1.0);
        // A lone letter outside ASCII: a character of its own, barely learned.
        let chinese: &[(&str, &[&str])] = &[("我", &["我"]), ("的", &["的"]), ("狗", &["狗"])];
        assert_eq!(share(chinese), 0.0);
        // The French "à" is the "a" the model knows.
        let french: &[(&str, &[&str])] = &[
            ("Il", &["il"]),
            ("va", &["va"]),
            ("à", &["a"]),
            ("Lyon", &["lyon"]),
        ];
        assert_eq!(share(french), 1.0);
        let russian: &[(&str, &[&str])] = &[
            ("В", &["в"]),
            ("какие", &["как", "##ие"]),
            ("дни", &["д", "##ни"]),
            ("у", &["у"]),
        ];
        assert_eq!(share(russian), 0.0);
        // Too few words to judge, or none: read whole.
        assert_eq!(share(&[("Tamagotchi", &["tam", "##ago", "##tchi"])]), 1.0);
        assert_eq!(
            share(&[("12:30", &["12", ":", "30"]), ("🦀", &["[UNK]"])]),
            1.0
        );
        assert_eq!(share(&[]), 1.0);
    }
}
