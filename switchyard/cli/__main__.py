from switchyard.cli import app

app(prog_name="switchyard")
