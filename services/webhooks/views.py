"""HTTP handlers of the webhooks service, named by the route table's operation ids."""
