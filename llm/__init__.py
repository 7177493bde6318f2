"""How answers are generated, shared by both arms: one `Generator` interface, several backends."""
