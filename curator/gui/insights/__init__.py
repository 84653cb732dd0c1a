"""The Insights pane: charts, the confusion matrix and learning."""
