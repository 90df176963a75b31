"""HTTP handlers of the customers service, named by the route table's operation ids."""
