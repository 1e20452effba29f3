use super::unpoisoned;
use std::sync::{Arc, Mutex};

fn poisoned() -> Arc<Mutex<u32>> {
    let state = Arc::new(Mutex::new(0));
    let held = Arc::clone(&state);
    let _ = std::thread::spawn(move || {
        let _guard = held.lock().unwrap();
        panic!("a bug under the lock");
    })
    .join();
    assert!(state.is_poisoned());
    state
}

#[test]
#[should_panic(expected = "lock-client's shared state is poisoned")]
fn a_panic_under_the_lock_is_not_hidden() {
    let state = poisoned();
    drop(unpoisoned(state.lock()));
}

#[test]
fn a_drop_during_that_panic_goes_ahead() {
    struct Handle(Arc<Mutex<u32>>);
    impl Drop for Handle {
        fn drop(&mut self) {
            *unpoisoned(self.0.lock()) += 1;
        }
    }
    let state = poisoned();
    let handle = Handle(Arc::clone(&state));
    let unwound = std::thread::spawn(move || {
        let _handle = handle;
        panic!("the first panic");
    })
    .join();
    assert!(unwound.is_err(), "the first panic unwound, no abort");
    assert_eq!(*state.lock().unwrap_or_else(|p| p.into_inner()), 1);
}
