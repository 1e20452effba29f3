use std::sync::{Arc, Mutex};

/// The state listeners of a client (`ZooKeeper::add_listener`).
type Listeners<T> = Vec<Box<dyn Fn(T) + Send + 'static>>;

#[derive(Clone)]
pub struct ListenerSet<T>
where
    T: Send,
{
    listeners: Arc<Mutex<Listeners<T>>>,
}

impl<T> ListenerSet<T>
where
    T: Send + Clone,
{
    pub fn new() -> Self {
        ListenerSet {
            listeners: Arc::new(Mutex::new(Listeners::new())),
        }
    }

    pub fn subscribe<Listener: Fn(T) + Send + 'static>(&self, listener: Listener) {
        self.listeners.lock().unwrap().push(Box::new(listener));
    }

    pub fn notify(&self, payload: &T) {
        let listeners = self.listeners.lock().unwrap();

        for listener in listeners.iter() {
            listener(payload.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ListenerSet;
    use std::sync::mpsc;

    #[test]
    fn test_add_listener_to_set() {
        let (tx, rx) = mpsc::channel();
        let ls = ListenerSet::<bool>::new();
        ls.subscribe(move |e| tx.send(e).unwrap());
        ls.notify(&true);
        assert_eq!(rx.try_recv(), Ok(true));
    }
}
