//! The RX front end: frame verdicts, store and forward, header records and payload, and
//! their dispatch to the responder and the requester.

pub mod dispatch;
pub mod rx_fifo;
pub mod rx_parser;
