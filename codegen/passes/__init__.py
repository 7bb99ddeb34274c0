"""Compiler passes: each module holds one pass, a function Graph -> Graph."""
