//! What the driver layer says about itself (which library loaded from where, why one is
//! missing), through `tracing` under the target `chorus_driver`.

use std::sync::atomic::{AtomicBool, Ordering};

static SHOW: AtomicBool = AtomicBool::new(false);

/// Emits the driver layer's messages at `info` level (`on`) or `debug` (the default).
/// `chorus-cuda` sets it from its `show_messages` setting.
pub fn set_show_messages(on: bool) {
    SHOW.store(on, Ordering::Relaxed);
}

/// Emits `text` at the level [`set_show_messages`] chose.
pub(crate) fn message(text: impl AsRef<str>) {
    if SHOW.load(Ordering::Relaxed) {
        tracing::info!(target: "chorus_driver", "{}", text.as_ref());
    } else {
        tracing::debug!(target: "chorus_driver", "{}", text.as_ref());
    }
}
