//! metrics placeholder
