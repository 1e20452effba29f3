//! [`Recorder`]: a `tracing` subscriber for the tests that check what is logged.

/// A `tracing` subscriber that keeps what it sees, as text: spans with their
/// fields, events with their fields and the span they belong to.
#[derive(Default)]
pub(super) struct Recorder {
    pub(super) lines: std::sync::Mutex<Vec<String>>,
    next: std::sync::atomic::AtomicU64,
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let id = 1 + self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut fields = Fields(String::new());
        span.record(&mut fields);
        let line = format!("span#{id} {}{}", span.metadata().name(), fields.0);
        self.lines.lock().unwrap().push(line);
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut fields = Fields(String::new());
        values.record(&mut fields);
        let line = format!("record#{}{}", span.into_u64(), fields.0);
        self.lines.lock().unwrap().push(line);
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        let parent = event.parent().map_or(0, |p| p.into_u64());
        let line = format!("event#{parent} {}{}", event.metadata().level(), fields.0);
        self.lines.lock().unwrap().push(line);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
