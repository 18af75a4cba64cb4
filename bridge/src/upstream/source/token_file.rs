//! A bearer token read from a file: a pod's projected service-account token,
//! or a kubeconfig's `tokenFile`. The kubelet rewrites that file before the
//! token expires, so the file is read again at least once a
//! [`REREAD_EVERY`], and at once after the apiserver answers 401: the token
//! sent may have expired or been revoked, and the file may already hold its
//! successor.
//!
//! This is client-go's rule (its cached file token source keeps a token a
//! minute, and its token transport drops the cached token on a 401). kube's
//! own token-file support only has the first half, so a token that expired
//! early would fail every request for up to a minute.

use http::header::AUTHORIZATION;
use http::{HeaderValue, Request, Response, StatusCode};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower::{BoxError, Layer, Service};

/// How long a token read from the file is sent before the file is read
/// again: client-go's cached file token source's period. A projected token
/// lives at least ten minutes and is rewritten when 80 % of its life is
/// gone, so a minute-old copy is never the only one still valid.
pub const REREAD_EVERY: Duration = Duration::from_secs(60);

/// The token file, and the token last read from it.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    cached: Mutex<Option<Read>>,
}

/// A token as read, and when.
#[derive(Debug, Clone)]
struct Read {
    header: HeaderValue,
    at: Instant,
}

impl TokenFile {
    /// The token in `path`, read now, so that a missing or unusable file is
    /// an error at start rather than at the first request.
    pub fn open(path: &Path) -> Result<Arc<TokenFile>, String> {
        let file = TokenFile {
            path: path.to_path_buf(),
            cached: Mutex::new(None),
        };
        file.header()?;
        Ok(Arc::new(file))
    }

    /// The `Authorization` header to send now, and when its token was read;
    /// the file is read again when the copy is older than [`REREAD_EVERY`]
    /// or was dropped after a 401.
    fn header(&self) -> Result<Read, String> {
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(read) = cached.as_ref()
            && (read.at.elapsed() < REREAD_EVERY || read_once())
        {
            return Ok(read.clone());
        }
        let read = Read {
            header: bearer(&self.path)?,
            at: Instant::now(),
        };
        *cached = Some(read.clone());
        Ok(read)
    }

    /// The apiserver refused the token read at `read_at`: the next request
    /// reads the file again, unless a later read already replaced it.
    fn refused(&self, read_at: Instant) {
        if read_once() {
            return;
        }
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if cached.as_ref().is_some_and(|read| read.at <= read_at) {
            *cached = None;
        }
    }
}

/// The test-only fault that keeps the first token read for ever.
fn read_once() -> bool {
    crate::test_break::is(crate::test_break::Break::TokenReadOnce)
}

/// `Bearer <the file's token>`, marked sensitive so that no log prints it.
fn bearer(path: &Path) -> Result<HeaderValue, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", path.display()));
    }
    let mut header = HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| {
        format!(
            "the token in {} cannot be sent in an HTTP header: it holds a control character or a line break",
            path.display()
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// Puts the file's token on every request (see the module's rules).
#[derive(Debug, Clone)]
pub struct TokenFileLayer(pub Arc<TokenFile>);

impl<S> Layer<S> for TokenFileLayer {
    type Service = TokenFileService<S>;

    fn layer(&self, inner: S) -> TokenFileService<S> {
        TokenFileService {
            inner,
            file: self.0.clone(),
        }
    }
}

/// The service of [`TokenFileLayer`].
#[derive(Debug, Clone)]
pub struct TokenFileService<S> {
    inner: S,
    file: Arc<TokenFile>,
}

type Answer<B> = Pin<Box<dyn Future<Output = Result<Response<B>, BoxError>> + Send>>;

impl<S, ReqBody, B> Service<Request<ReqBody>> for TokenFileService<S>
where
    S: Service<Request<ReqBody>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = Answer<B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Answer<B> {
        let read = match self.file.header() {
            Ok(read) => read,
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        };
        request
            .headers_mut()
            .insert(AUTHORIZATION, read.header.clone());
        let answer = self.inner.call(request);
        let file = self.file.clone();
        Box::pin(async move {
            let response = answer.await.map_err(Into::into)?;
            if response.status() == StatusCode::UNAUTHORIZED {
                file.refused(read.at);
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_in(dir: &Path, token: &str) -> PathBuf {
        let path = dir.join("token");
        std::fs::write(&path, format!("{token}\n")).unwrap();
        path
    }

    #[test]
    fn the_token_is_kept_until_a_401_then_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_in(dir.path(), "first");
        let file = TokenFile::open(&path).unwrap();
        let first = file.header().unwrap();
        assert_eq!(first.header, "Bearer first");
        assert!(first.header.is_sensitive());
        token_in(dir.path(), "second");
        assert_eq!(file.header().unwrap().header, "Bearer first");
        file.refused(first.at);
        assert_eq!(file.header().unwrap().header, "Bearer second");
    }

    #[test]
    fn a_401_to_an_older_token_keeps_a_newer_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_in(dir.path(), "first");
        let file = TokenFile::open(&path).unwrap();
        let old = file.header().unwrap();
        file.refused(old.at);
        token_in(dir.path(), "second");
        let new = file.header().unwrap();
        token_in(dir.path(), "third");
        file.refused(old.at);
        assert_eq!(file.header().unwrap().header, new.header);
    }

    #[test]
    fn a_missing_empty_or_unsendable_file_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = TokenFile::open(&dir.path().join("nothing")).unwrap_err();
        assert!(missing.contains("cannot read the token file"), "{missing}");
        let empty = TokenFile::open(&token_in(dir.path(), " ")).unwrap_err();
        assert!(empty.contains("is empty"), "{empty}");
        let broken = TokenFile::open(&token_in(dir.path(), "a\u{7}b")).unwrap_err();
        assert!(broken.contains("cannot be sent"), "{broken}");
    }
}
