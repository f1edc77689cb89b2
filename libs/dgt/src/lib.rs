//! DGT e-board serial protocol.
