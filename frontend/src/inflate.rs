//! The page's side of a compressed connection (`/ws?compress=deflate`):
//! each binary message decompressed with the browser's own
//! `DecompressionStream("deflate-raw")`, in order, the current stream's
//! context kept across messages (framing: [`watchlife_protocol::deflated`]).

use crate::js_error::message;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use watchlife_protocol::deflated::{Part, read};
use web_sys::{ReadableStreamDefaultReader, WritableStreamDefaultWriter};

#[wasm_bindgen]
extern "C" {
    /// The platform's decompression (web-sys binds it only behind an
    /// unstable flag).
    #[wasm_bindgen(js_name = DecompressionStream)]
    type DecompressionStream;

    #[wasm_bindgen(constructor, catch, js_class = "DecompressionStream")]
    fn new(format: &str) -> Result<DecompressionStream, JsValue>;

    #[wasm_bindgen(method, getter)]
    fn readable(this: &DecompressionStream) -> web_sys::ReadableStream;

    #[wasm_bindgen(method, getter)]
    fn writable(this: &DecompressionStream) -> web_sys::WritableStream;
}

/// Whether this browser can read compressed streams: the page asks for
/// them only then.
pub fn supported() -> bool {
    Reflect::get(&js_sys::global(), &"DecompressionStream".into())
        .map(|class| !class.is_undefined())
        .unwrap_or(false)
}

/// One raw deflate stream, its context kept from message to message.
struct Stream {
    writer: WritableStreamDefaultWriter,
    reader: ReadableStreamDefaultReader,
}

impl Stream {
    fn new() -> Result<Stream, String> {
        let inflate = DecompressionStream::new("deflate-raw").map_err(|e| message(&e))?;
        let writer = inflate.writable().get_writer().map_err(|e| message(&e))?;
        let reader = inflate.readable().get_reader().unchecked_into();
        Ok(Stream { writer, reader })
    }

    /// `payload` decompressed: exactly `len` bytes, since each message ends
    /// on a sync flush.
    async fn inflate(&self, payload: &[u8], len: usize) -> Result<Vec<u8>, String> {
        // The write resolves once read: read first, then see it went well.
        let written = self
            .writer
            .write_with_chunk(&Uint8Array::from(payload).into());
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let result = JsFuture::from(self.reader.read())
                .await
                .map_err(|e| message(&e))?;
            let done = Reflect::get(&result, &"done".into())
                .ok()
                .and_then(|d| d.as_bool())
                .unwrap_or(true);
            if done {
                return Err("the compressed stream ended early".into());
            }
            let value = Reflect::get(&result, &"value".into()).map_err(|e| message(&e))?;
            out.extend(value.unchecked_into::<Uint8Array>().to_vec());
        }
        JsFuture::from(written).await.map_err(|e| message(&e))?;
        if out.len() > len {
            return Err(format!("a message said {len} bytes and held {}", out.len()));
        }
        Ok(out)
    }

    /// Nothing more is read: cancelling the readable side ends the stream
    /// (closing the writable side first would leave a promise to reject).
    fn close(self) {
        let _ = self.reader.cancel();
    }
}

/// A compressed connection's reader.
#[derive(Default)]
pub struct Inflater {
    current: Option<Stream>,
}

impl Inflater {
    /// The frames' text that one binary message carries (each frame
    /// followed by a newline), or why it cannot be read.
    pub async fn read(&mut self, bytes: &[u8]) -> Result<String, String> {
        let message = read(bytes)?;
        let bytes = match message.part {
            Part::Plain => message.payload.to_vec(),
            Part::Alone => {
                let alone = Stream::new()?;
                let bytes = alone.inflate(message.payload, message.len).await;
                alone.close();
                bytes?
            }
            Part::Begins => {
                if let Some(old) = self.current.take() {
                    old.close();
                }
                let stream = self.current.insert(Stream::new()?);
                stream.inflate(message.payload, message.len).await?
            }
            Part::Continues => {
                let stream = self
                    .current
                    .as_ref()
                    .ok_or("a message continues a compressed stream that never began")?;
                stream.inflate(message.payload, message.len).await?
            }
        };
        String::from_utf8(bytes).map_err(|e| format!("a compressed message is not text: {e}"))
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        if let Some(stream) = self.current.take() {
            stream.close();
        }
    }
}
