"""The core service, ``Harness``, and what it composes: the catalog of tools and agents, write-back,
the live index and the serving services, connections, authoring, scripts, recovery. The rims
(``cli``, ``server``) call it; it knows nothing of them."""
