//! The blocks held to the behavioural model (`rocenic_model`), the golden oracle: each
//! module drives one block under RustHDL simulation and compares what it does with what
//! the model does on the same input. They live here, outside `hdl/src`, so that the RTL
//! is never built from the model, test code included (shared/ARCHITECTURE.md).

mod atomic_unit;
mod control;
mod mr_check;
mod read_resp;
mod req_rx_check;
mod requester;
mod resp_check;
mod responder;
mod segmenter;
