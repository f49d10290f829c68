from platform_api.cli import app

app(prog_name="switchyard")
