"""Writing the answer: its prompt, the speculative draft, the extractive quote, its citations and their spans, and
the final message a host receives."""
