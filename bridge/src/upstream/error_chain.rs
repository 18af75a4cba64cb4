//! An error told with its causes, for the upstream's logs and reports.

/// `error` and every source below it, as one line; a cause whose text is
/// already said is not repeated. tonic's transport error alone says only
/// "transport error", its causes say which (a refused certificate, a reset);
/// the kube client's errors likewise.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let more = e.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_told_with_its_causes() {
        #[derive(Debug, thiserror::Error)]
        #[error("transport error")]
        struct Transport(#[source] std::io::Error);
        let refused = std::io::Error::new(std::io::ErrorKind::InvalidData, "UnknownIssuer");
        assert_eq!(
            with_causes(&Transport(refused)),
            "transport error: UnknownIssuer"
        );
    }
}
