"""Running as several processes: the bus on Redis Streams, leases, and the outbound relay.

``bot run --role gateway`` owns the platform connections and delivers what workers send;
``--role worker`` runs the supervisor and agents on the partitions it holds leases on.
State is in PostgreSQL, shared by all (see docs/deploy/scale.md, "Running several processes").
"""
