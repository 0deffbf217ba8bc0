//! The baseline of `benches/e2e.sh`: what parsing a whole message costs any SDK. `read FILE`
//! reads the message; `parse FILE` also parses it with `serde_json::from_slice::<Value>`. The
//! script times both (user and system CPU, `/usr/bin/time`) and takes the difference. Run by
//! `cargo bench` without arguments, it says so and does nothing.
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [mode, path] = &args[..] else {
        eprintln!("e2e_baseline: run by benches/e2e.sh as `e2e_baseline read|parse FILE`");
        return;
    };
    let message = std::fs::read(path).expect("read the message file");
    if mode == "parse" {
        let value: serde_json::Value =
            serde_json::from_slice(&message).expect("the message is JSON");
        black_box(value);
    }
    black_box(message.len());
}
