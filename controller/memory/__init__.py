"""Critical memory: the store, its checks at start and on demand."""
