"""Public op functions with TF's names; each calls its registry entry."""
