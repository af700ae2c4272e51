"""What the results say: history, comparison, alerts, export, reports and explanations."""
