//! DGT e-boards: from decoded board messages to observations, and replaying captures.
