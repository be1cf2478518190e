"""Env base classes shared by the tasks."""
