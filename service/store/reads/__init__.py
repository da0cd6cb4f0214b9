"""The reads behind the API, the pages and the integrations: a commit's rows, the dashboards'
lists, what GitHub is told, the pull requests page, the routes' lookups and the gauges."""
