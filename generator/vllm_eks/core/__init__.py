"""Shared vocabulary of every stage: errors, units, derivation lines, topology kinds, other projects' API names."""
