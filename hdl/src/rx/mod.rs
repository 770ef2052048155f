//! The RX front end: frame verdicts, store and forward, header records and payload.

pub mod rx_fifo;
pub mod rx_parser;
