"""HTTP handlers of the ideas service, named by the route table's operation ids."""
