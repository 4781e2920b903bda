"""Example context-harness extension: an agent, a tool and a connector type."""

from ctxh_example.agents import ReleaseNotesAgent
from ctxh_example.connectors import ChangelogConnector
from ctxh_example.tools import WordCount

__all__ = ["ChangelogConnector", "ReleaseNotesAgent", "WordCount"]
