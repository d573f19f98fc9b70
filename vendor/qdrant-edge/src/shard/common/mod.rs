pub mod stopping_guard;
