//! handlers
