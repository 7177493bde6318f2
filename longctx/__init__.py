"""The long-context arm: the whole context in the prompt, truncated only when it must be."""
