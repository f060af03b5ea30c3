"""The simulated providers: their live behaviour (the provider world), its request bodies, the
callbacks they send and the links to their hosted pages."""
