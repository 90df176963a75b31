"""Local run tooling behind `make run` and `make test` (standard library only).

common      paths under .run/, logging, small process helpers
targets     DATABASE_URL / AMQP_URL: defaults and parts
amqp        an AMQP 0-9-1 login, the RabbitMQ readiness check
packages    installing the distribution packages when root
postgres    checking PostgreSQL and creating the database
pgcluster   the private PostgreSQL cluster under .run/pg
rabbitmq    checking RabbitMQ; the private node under .run/rabbitmq
leases      who uses the private servers; the lock around starting and stopping them
servers     both servers together: ensure, release, stop, status
layout      which processes run on which ports, and their shared secrets
supervisor  running, restarting and stopping the processes
"""
